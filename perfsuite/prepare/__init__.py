"""What is measured: models, quantization, framework backends (each registers itself),
accuracy, the slow-INT8 diagnosis, the artefact cache."""
