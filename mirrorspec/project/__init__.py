"""A project as a model, and what is done with it without Spark.

- `model`: the frozen dataclasses of a project;
- `build`: `build_project`, schema-valid YAML → the model, every problem raised together;
- `table_builder`: each table built over `defaults:`, and its cross-checks;
- `selection`: dbt-style selectors over a compiled plan;
- `scaffold`: `mirrorspec init`'s new project;
- `diff/`: what a change to the project does to the mirrored tables (two plans compared; a
  package: rules, result, compare, schema_changes, format_changes, table_changes, normalise,
  report).

Loading and validating the YAML lives in `mirrorspec.load`; compiling it in `mirrorspec.compile`.
"""
