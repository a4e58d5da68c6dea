"""A general TSV triple loader: ``head<TAB>relation<TAB>tail[<TAB>reliability]``, errors name file:line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib import resources  # noqa: F401  (used by the doctest)
from importlib.resources.abc import Traversable
from os import PathLike
from pathlib import Path

from grounding.datasets._lines import bad_name, excerpt, parse_number
from grounding.graph import Triple, TypedGraph

__all__ = ["load_triples", "read_triples"]


_ROLES = ("head", "relation", "tail")


def _parse_reliability(text: str, where: str) -> float:
    try:
        w = parse_number(text)
    except ValueError:
        raise ValueError(f"{where}: reliability {excerpt(text)} is not a number") from None
    if not 0.0 < w <= 1.0:  # also rejects nan
        raise ValueError(f"{where}: reliability must lie in (0, 1], got {excerpt(text)}")
    return w


def _check_names(names: list[str], where: str, line: str) -> None:
    """Names are kept exactly as written: an empty, padded or control-character name is an
    error (``"New York "`` would otherwise be a second node beside ``"New York"``)."""
    if not all(names):
        raise ValueError(f"{where}: empty head, relation or tail in {excerpt(line)}")
    for role, name in zip(_ROLES, names):
        why = bad_name(name)
        if why:
            raise ValueError(f"{where}: {role} {excerpt(name)} {why}")


def _parse_lines(lines: Iterable[str], source: str) -> tuple[list[Triple], list[float]]:
    triples: list[Triple] = []
    weights: list[float] = []
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{source}:{lineno}"
        fields = line.split("\t")
        if len(fields) not in (3, 4):
            raise ValueError(
                f"{where}: expected 3 or 4 tab-separated fields "
                f"(head, relation, tail[, reliability]), got {len(fields)}: {excerpt(line)}"
            )
        names = fields[:3]
        _check_names(names, where, line)
        w = _parse_reliability(fields[3], where) if len(fields) == 4 else 1.0
        triples.append((names[0], names[1], names[2]))
        weights.append(w)
    if not triples:
        raise ValueError(f"{source}: no triples found")
    return triples, weights


def load_triples(
    path: str | PathLike | Traversable, *, entities: Sequence[str] | None = None
) -> TypedGraph:
    """Load a typed evidence graph from a TSV file ``head<TAB>relation<TAB>tail[<TAB>reliability]``.

    Lines that are blank or start with ``#`` are skipped. Names are kept exactly as written
    (no whitespace is stripped). The reliability column is optional (default 1.0), a plain
    decimal number in ``(0, 1]`` (Eq. (8)). Entities and relations are indexed in order of
    first appearance.

    Args:
        path: a filesystem path or an ``importlib.resources`` traversable.
        entities: further entity names the file's triples do not mention (e.g. every answer
            a model may give), added without edges after the file's own, in the order given
            (:meth:`~grounding.TypedGraph.with_entities`; names the file mentions are kept
            once, in their place).

    Returns:
        A :class:`grounding.TypedGraph`.

    Raises:
        ValueError: naming the file and the line number, for a wrong number of columns, an
            empty name, a name with leading or trailing whitespace or a control character
            (NUL, ...), a reliability that is not a plain number in ``(0, 1]`` (``0.5_0``,
            ``" 0.5"`` are refused), or bytes that are not UTF-8 (a leading byte-order mark is
            ignored); or when the file holds no triple.

    Example:
        >>> g = load_triples(resources.files("grounding.datasets") / "data" / "lou_seal.tsv")
        >>> g.has_triple(("lou_seal", "mascot_of", "san_francisco_giants"))
        True
    """
    graph = TypedGraph.from_triples(*read_triples(path))
    if entities is None:
        return graph
    if isinstance(entities, (str, bytes)):
        raise TypeError(f"entities must be a sequence of names, not a string: {entities!r:.100}")
    entities = list(entities)
    for j, name in enumerate(entities):
        why = bad_name(name)
        if why:  # named by the argument, not by a place in the merged vocabulary
            raise ValueError(f"load_triples({str(path)!r}): entities[{j}] {excerpt(name)} {why}")
    return graph.with_entities(entities)


def read_triples(path: str | PathLike | Traversable) -> tuple[list[Triple], list[float]]:
    """The name triples and reliabilities of a TSV file, in file order (see :func:`load_triples`).

    Raises:
        ValueError: as :func:`load_triples`, naming the file and the line.
    """
    if isinstance(path, (str, PathLike)):
        path = Path(path)
    with path.open("rb") as fh:
        return _parse_lines(_decoded(fh, str(path)), str(path))


def _decoded(lines: Iterable[bytes], source: str) -> Iterable[str]:
    """UTF-8 lines (a leading byte-order mark dropped); a byte that is not UTF-8 is an error
    naming the file, the line and the byte offset in it."""
    for lineno, raw in enumerate(lines, start=1):
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{source}:{lineno}: not UTF-8 text (byte {raw[e.start]:#04x} at column "
                f"{e.start + 1})"
            ) from None
