"""Dataset models, the LENS-format loader and the validator."""

from pytest_lens.datasets.loader import DatasetError, LoadedDataset, LoadedScope, load_dataset, load_datasets
from pytest_lens.datasets.models import Dataset, Episode, GroundTruth, KeyFact, Question, Scope
from pytest_lens.datasets.validator import DatasetIssue, Severity, validate_dataset

__all__ = [
    "Dataset",
    "DatasetError",
    "DatasetIssue",
    "Episode",
    "GroundTruth",
    "KeyFact",
    "LoadedDataset",
    "LoadedScope",
    "Question",
    "Scope",
    "Severity",
    "load_dataset",
    "load_datasets",
    "validate_dataset",
]
