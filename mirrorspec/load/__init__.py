"""Stages load → render → validate: YAML files with line/column marks, Jinja on string values,
JSON Schema validation with located errors. Imported by `model`, `compile` and above; imports
only `plan`, `mirroring` and the ground floor.

- `yaml_doc`: YAML files → plain data that remembers every key's line and column;
- `render`: Jinja2 on string values; `budget`: the work one template may do;
  `secret_names`: which `env_var()` values are credentials;
- `validate`: JSON Schema validation, every error located; `fastcheck`: its fast path;
- `project`: a project's files found, then loaded, rendered and validated.
"""

from mirrorspec.load.project import LoadedProject, load_files, parse_vars
from mirrorspec.load.yaml_doc import Document, format_key_path, load_document, parse_document

__all__ = ["Document", "LoadedProject", "format_key_path", "load_document", "load_files",
           "parse_document", "parse_vars"]
