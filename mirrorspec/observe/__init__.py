"""OpenLineage run events per table (`lineage.py`, the optional `mirrorspec[openlineage]`
extra), fed after each pass of `run` and `mirror` with `TableSample`s (`samples.py`). Never
fails a pass. (The Prometheus endpoint of `--watch` is `mirrorspec/operate/metrics.py`.)

- `lineage`: the START and COMPLETE/FAIL events;
- `samples`: `TableSample`, a pass's table as the events read it;
- `delivery`: the events sent off the pass's path (a bounded queue, one sender thread).
"""
