"""What is measured: models, quantization, framework backends, accuracy, the slow-INT8
diagnosis, the artefact cache; and ``extensions``, the entry-point groups through which other
packages add frameworks, precisions and executors."""
