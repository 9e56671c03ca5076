"""Over the results history (read through ``perfsuite.store.HistoryQueries``): change points
per benchmark series (``changes``) and the trend pages that show them (``trends``)."""
