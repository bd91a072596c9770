"""Type stubs of the extension module behind ``toolnexus``."""

from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence

NEAR_UNIFORM_TOLERANCE: float

class ClassifierError(Exception):
    """A classifier's failure; ``str(e)`` is the library's message."""

    kind: str
    status: Optional[int]
    is_retryable: bool
    is_timeout: bool
    is_cancelled: bool

class NoulAnswer:
    noul: float

class ChoiceAnswer:
    choice: str
    probabilities: Dict[str, float]
    confidence: float
    near_uniform: bool

class ScoreAnswer:
    score: float
    legend: Dict[str, str]
    probabilities: Dict[str, float]
    confidence: float
    def levels(self) -> List[str]: ...

class Usage:
    input_tokens: int
    output_tokens: int
    cost: Optional[float]

class Decision:
    @property
    def model(self) -> str: ...
    @property
    def calibrated(self) -> bool: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def answers(self) -> Dict[str, Any]: ...
    def noul(self, key: str) -> NoulAnswer: ...
    def choice(self, key: str) -> ChoiceAnswer: ...
    def score(self, key: str) -> ScoreAnswer: ...
    def to_dict(self) -> Dict[str, Any]: ...
    @staticmethod
    def from_dict(wire: Mapping[str, Any]) -> "Decision": ...

class Classifier:
    @property
    def style(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def call(self) -> str: ...
    def evaluate(self, state: Any, questions: Mapping[str, Any], *, call_name: Optional[str] = ...) -> Decision: ...
    def evaluate_async(
        self, state: Any, questions: Mapping[str, Any], *, call_name: Optional[str] = ...
    ) -> Awaitable[Decision]: ...
    def evaluate_table(
        self,
        table: Any,
        questions: Mapping[str, Any],
        *,
        state_column: Optional[str] = ...,
        state_columns: Optional[Sequence[str]] = ...,
        concurrency: int = ...,
        progress: Optional[Callable[[int, int], Any]] = ...,
        call_name: Optional[str] = ...,
    ) -> Any: ...

def create_classifier(**kwargs: Any) -> Classifier: ...
def near_uniform(probabilities: Mapping[str, float]) -> bool: ...
def decision_from_dict(wire: Mapping[str, Any]) -> Decision: ...
def canonical_json(value: Any) -> str: ...
