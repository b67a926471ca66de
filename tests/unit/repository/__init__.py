"""Unit tests of the repository itself: docs and reference pages, the architecture doc, the
import contracts, the changelog, packaging metadata, scripts."""
