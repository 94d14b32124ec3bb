"""What a turn used (issue 34): its input, cached input and output tokens, and their cost.

Each response of a turn (its rounds) is counted by the provider's ``usage`` when it gave one
(``TurnStream.usage``), else estimated the way the context packer estimates
(``prompting.CHARS_PER_TOKEN`` characters a token: the request's text for its input, the
answer's text and tool input for its output) and the turn is marked ``estimated``. The cost
is the model's catalogue prices applied to each response (``Prices.cost``); None when the
prices are unknown. Docs: docs/models.md, "Spend".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from spark_ide.upstream import Message, ToolCall, ToolOutput, TurnRequest, TurnStream
from spark_ide.upstream.catalogue import Prices

from .prompting import CHARS_PER_TOKEN

_STORED = Decimal("0.0000000001")  # a cost is kept to 10 places (the database column's)


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """Tokens and cost of a turn, or of several added up (a session's, a day's).
    ``input_tokens`` counts every input token, the cached ones included."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False  # some of it is our estimate: the provider gave no usage
    cost_usd: Decimal | None = None  # None: no price known for any of it

    def plus(self, other: TurnUsage) -> TurnUsage:
        cost = None if self.cost_usd is None and other.cost_usd is None else (
            (self.cost_usd or Decimal(0)) + (other.cost_usd or Decimal(0)))
        return TurnUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            estimated=self.estimated or other.estimated,
            cost_usd=cost,
        )

    @property
    def cost(self) -> Decimal:
        """The cost, an unknown one counting as nothing (for sums and budgets)."""
        return self.cost_usd or Decimal(0)

    def payload(self) -> dict[str, int | bool | str | None]:
        """As ``turn.finished`` carries it: the cost as a decimal string (exact), or null."""
        return {
            "input_tokens": self.input_tokens, "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens, "estimated": self.estimated,
            "cost_usd": None if self.cost_usd is None else decimal_text(self.cost_usd),
        }

    @classmethod
    def from_payload(cls, data: Mapping[str, object] | None) -> TurnUsage:
        """Back from ``payload`` (a stored event); anything malformed counts as nothing."""
        if not data:
            return cls()

        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

        cost = data.get("cost_usd")
        return cls(
            input_tokens=count("input_tokens"), cached_input_tokens=count("cached_input_tokens"),
            output_tokens=count("output_tokens"), estimated=data.get("estimated") is True,
            cost_usd=Decimal(cost) if isinstance(cost, str) and _is_decimal(cost) else None,
        )


def _is_decimal(text: str) -> bool:
    try:
        return Decimal(text).is_finite()
    except ArithmeticError:
        return False


def decimal_text(value: Decimal) -> str:
    """``value`` to 10 places, without trailing zeros: ``0.00123``, ``2``."""
    text = f"{value.quantize(_STORED):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def usd(value: Decimal) -> str:
    """Money as people read it: ``$1.25`` from a dollar up, ``$0.0042`` below."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def text_tokens(chars: int) -> int:
    """The estimate of ``chars`` characters' tokens (rounded up: a started token counts)."""
    return -(-max(chars, 0) // CHARS_PER_TOKEN)


def _item_chars(item: Message | ToolCall | ToolOutput) -> int:
    if isinstance(item, Message):
        return len(item.text)
    if isinstance(item, ToolOutput):
        return len(item.output)
    return len(item.input) + len(item.arguments)


def request_tokens(request: TurnRequest) -> int:
    """The estimate of a request's input tokens: its instructions and its whole conversation
    (a request chained on an earlier response is billed for that response's context too)."""
    return text_tokens(len(request.instructions) + sum(_item_chars(item) for item in request.conversation))


def answer_chars(stream: TurnStream) -> int:
    """The characters a response wrote so far: its text and its complete tool calls' input."""
    return len(stream.text) + sum(len(call.input) for call in stream.tool_calls)


def turn_usage(streams: Iterable[TurnStream], prices: Prices | None, *, streamed: int | None = None) -> TurnUsage:
    """A turn's usage over its responses (``streams``, round by round): each counted by the
    provider's ``usage``, or estimated. ``streamed``: the turn's own count of the output it
    read (``TurnRun.streamed_tokens``), which stands for the output of a turn none of whose
    responses was counted by the provider."""
    total = TurnUsage()
    counted = False
    for stream in streams:
        usage = stream.usage
        if usage is not None:
            counted = True
            part = TurnUsage(usage.input_tokens, min(usage.cached_input_tokens, usage.input_tokens),
                             usage.output_tokens)
        else:
            part = TurnUsage(request_tokens(stream.request), 0, text_tokens(answer_chars(stream)), estimated=True)
        if prices is not None:
            part = TurnUsage(part.input_tokens, part.cached_input_tokens, part.output_tokens, part.estimated,
                             prices.cost(input_tokens=part.input_tokens, cached_input_tokens=part.cached_input_tokens,
                                         output_tokens=part.output_tokens))
        total = total.plus(part)
    if not counted and streamed is not None and streamed != total.output_tokens:
        output = streamed
        cost = total.cost_usd
        if prices is not None and cost is not None:  # the output at the turn's own count
            cost += (output - total.output_tokens) * prices.output / Decimal(1_000_000)
        total = TurnUsage(total.input_tokens, 0, output, total.estimated, cost)
    return total
