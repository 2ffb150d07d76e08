"""Checks of text models: abnormal text, text drift, perturbation attacks, transformations, NLP tests.

Importing this package registers every text check. The text columns are the `columns.text` role;
tokenisation (`driftline.checks.text.tokenise`) is shared by all of them. Checks that perturb
inputs call the monitored model on raw text (see `driftline.checks.text.evaluator`).
"""

from driftline.checks.text import abnormal, attacks, drift, nlp, prefix, transforms  # noqa: F401  (registration)
