"""Stand-in for MindSpeed-LLM (layout and API shapes only; see tests/fakes/README.md)."""
