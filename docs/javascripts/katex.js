// Render the \( ... \) and \[ ... \] spans that pymdownx.arithmatex writes, with the KaTeX copy
// shipped in docs/assets/katex (no network needed). Material's instant navigation re-renders
// through document$; a plain page load renders on DOMContentLoaded.
function renderMath(root) {
  renderMathInElement(root, {
    delimiters: [
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: false,
  });
}
if (typeof document$ !== "undefined") {
  document$.subscribe(({ body }) => renderMath(body));
} else {
  document.addEventListener("DOMContentLoaded", () => renderMath(document.body));
}
