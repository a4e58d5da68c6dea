"""grounding: evidence-relative grounding of LLM trajectories under incomplete KG evidence."""
