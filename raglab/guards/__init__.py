"""Hardening the assistant is handed (``guard.Guard``), each rule defined once: sources widened to whole sentences
(``widening``), the injection rule (``injection``, ``scripts``) and the learned detector (``detector``, ``ngrams``),
contact points (``contacts``) and specifics no source holds (``grounding``)."""
