"""The guard an assistant is handed: the hardening around the book's answer step, in one place.

The book's assistant (``raglab.book.assistant``) retrieves, refuses on weak evidence, generates and checks the
citations. Handed a ``Guard``, it also:

- widens each retrieved chunk to whole sentences of its document (``raglab.guards.widening``), so nothing is
  judged or quoted from a cut edge;
- hides from the model every sentence the injection rule, or the learned ``detector``, flags
  (``raglab.guards.injection``);
- keeps a contact point (e-mail, URL, phone) in an answer only when an unflagged sentence of a cited source holds
  it (``raglab.guards.contacts``), and refuses an answer with a number, code, e-mail or URL that no source
  holds (``raglab.guards.grounding``: ``unsupported-claim``).
"""
from __future__ import annotations

from dataclasses import dataclass

from raglab.book.prompt import Source
from raglab.guards.contacts import omit_untrusted_contacts
from raglab.guards.grounding import ungrounded
from raglab.guards.injection import visible_text
from raglab.guards.widening import source_at


@dataclass
class Guard:
    """The hardening of one assistant; ``detector``: the learned injection detector (None: the rule alone)."""

    detector: object | None = None

    def sources(self, hits: list, index) -> list[Source]:
        """The numbered sources of these hits, each widened to whole sentences of its document."""
        return [source_at(n, *index.locate(h.id)) for n, h in enumerate(hits, 1)]

    def visible(self, source: Source) -> str:
        """What of a source a model may see: its text without the flagged sentences."""
        return visible_text(source.chunk.text, self.detector, source.before, source.after, source.script)

    def check(self, text: str, sources: list[Source], cited: list[Source]) -> tuple[str, str | None]:
        """An answer that passed the citation check, with its untrusted contact points omitted, and the
        refusal reason (``unsupported-claim``) when it names a specific that no source holds."""
        text = omit_untrusted_contacts(text, sources, cited, self.detector)
        return text, ("unsupported-claim" if ungrounded(text, sources, self.detector) else None)
