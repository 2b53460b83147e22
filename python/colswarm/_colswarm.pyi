"""Type stubs of the Rust extension ``colswarm._colswarm`` (use the ``colswarm`` package)."""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str

#: A table as the extension reads it: ``(id, headers or None, columns)``, ``headers`` one
#: string (or None) per column, ``columns`` one list of cell strings per column.
RawTable = Tuple[str, Optional[List[Optional[str]]], List[List[str]]]

class Annotator:
    def __init__(
        self,
        model_dir: str,
        top_k: int = 3,
        threads: int = 1,
        namespaces: Optional[List[str]] = None,
        specialists: str = "router",
        batch_size: int = 16,
        lossy: bool = False,
        sample_rows: int = 1000,
        device: str = "cpu",
        abstain: bool = True,
        subject_column: Optional[str] = None,
        encoding: str = "utf-8",
    ) -> None: ...
    def annotate_json(self, items: Sequence[Union[str, RawTable]]) -> List[str]:
        """One JSON object per table (file path or raw table), as `colswarm annotate` prints."""
    def embed(
        self, items: Sequence[Union[str, RawTable]]
    ) -> List[Tuple[str, List[Tuple[int, Optional[str], List[float]]]]]:
        """Per table: its id and, per column, ``(index, header, vector)`` (`colswarm embed`)."""
    def describe(self) -> Dict[str, Any]: ...

def read_table(
    path: str, lossy: bool = False, sample_rows: int = 1000, encoding: str = "utf-8"
) -> RawTable: ...
def evaluate_json(
    model_dir: str,
    format: str,
    inputs: List[str],
    split: str = "all",
    task: Optional[str] = None,
    namespace: Optional[str] = None,
    no_specialists: bool = False,
    all_specialists: bool = False,
    batch_size: int = 16,
) -> str: ...

def fine_tune_json(
    model_dir: str,
    tables_dir: str,
    labels: str,
    out_dir: str,
    namespace: str,
    seed: int = 0,
    max_steps: int = 300,
    abstain: bool = True,
    progress: bool = False,
    encoding: str = "utf-8",
) -> str: ...
