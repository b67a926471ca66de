"""A project as a model, and what is done with it without Spark.

- `model`: frozen dataclasses built from schema-valid YAML, and the cross-checks;
- `selection`: dbt-style selectors over a compiled plan;
- `scaffold`: `mirrorspec init`'s new project;
- `diff`: what a change to the project does to the mirrored tables (two plans compared).

Loading and validating the YAML lives in `mirrorspec.load`; compiling it in `mirrorspec.compile`.
"""
