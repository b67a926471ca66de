"""Stages load → render → validate: YAML files with line/column marks, Jinja on string values,
JSON Schema validation with located errors. Imported by `model`, `compile` and above; imports
only `plan`, `mirroring` and the ground floor."""

from mirrorspec.load.project import LoadedProject, load_files, parse_vars
from mirrorspec.load.yaml_doc import Document, format_key_path, load_document, parse_document

__all__ = ["Document", "LoadedProject", "format_key_path", "load_document", "load_files",
           "parse_document", "parse_vars"]
