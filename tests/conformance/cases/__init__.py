"""Conformance case modules (see conformance.harness): one module per family of ops."""
