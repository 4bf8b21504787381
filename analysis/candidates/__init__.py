"""Preparing candidates: from each context's pool of generated reflections
(:class:`studies.models.PoolCandidate`) to the few a stage puts before annotators, as
the founding papers chose them, and how diverse they are.

* :mod:`.embeddings`: sentence embeddings (sentence-transformers), cached by text;
* :mod:`.clustering`: duplicates, agglomerative clusters, representatives and the
  seeded sample of clusters (no database);
* :mod:`.parameters`: a selection's parameters and their check; :mod:`.pool` the pool's
  reads;
* :mod:`.selection`: the selection's run and what it stores;
* :mod:`.statistics`: Self-BLEU and mean pairwise cosine of a pool, a selection or a
  stage's candidates.
"""
