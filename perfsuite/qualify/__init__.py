"""Server qualification: checks against a SKU reference or without one."""
