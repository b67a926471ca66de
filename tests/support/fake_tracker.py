"""A stand-in for Spark's status tracker (`SparkContext.statusTracker()`), for progress tests
that run without a JVM: active stages with their completed and total tasks."""

from __future__ import annotations


class Stage:
    def __init__(self, done: int, total: int):
        self.numCompletedTasks, self.numTasks = done, total


class Tracker:
    def __init__(self, stages: dict[int, Stage]):
        self.stages = stages

    def getActiveStageIds(self) -> list[int]:
        return list(self.stages)

    def getStageInfo(self, stage_id: int) -> Stage | None:
        return self.stages.get(stage_id)
