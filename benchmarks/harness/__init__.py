"""The benchmark harness: datasets, context packing, metrics, methods, runner and report.

Run it through ``python -m benchmarks.run_benchmark``; the modules follow the data:
dataset -> methods (build, retrieve) -> context (pack under a budget) -> metrics -> report.
"""

from __future__ import annotations

from .context import Context, Piece, pack
from .dataset import Dataset, Question, load_dataset
from .metrics import QuestionScore, aggregate, normalize, score_context

__all__ = [
    "Context",
    "Dataset",
    "Piece",
    "Question",
    "QuestionScore",
    "aggregate",
    "load_dataset",
    "normalize",
    "pack",
    "score_context",
]
