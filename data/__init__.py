"""Real data shipped with driftline: the demo's ACS census extract and UCI Adult (see each SOURCE.md)."""

# The column kinds of UCI Adult (data/adult/adult.parquet), as its documentation states them.
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
ADULT_CATEGORICAL = (
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)
