"""The orchestrator-free core around the checks, one subpackage per role: a run (`run`), its spec
(`config`), what it reads (`sources`, `references`), what it keeps (`history`), what it says (`alerts`,
`views`, `report`, `site`), what labels say later (`hindsight`), retraining, and small `tools`."""
