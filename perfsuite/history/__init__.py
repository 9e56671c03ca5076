"""Over the results history (``perfsuite.store.database``): change points per benchmark
series (``changes``) and the trend pages that show them (``trends``)."""
