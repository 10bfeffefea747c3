"""Stand-in for MindSpeed 2.2.0 (layout and signatures only; see tests/fakes/README.md)."""
