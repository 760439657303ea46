"""The serving modules SavedModel export puts around a model (TensorFlow only; loaded by `Task.serving_module`)."""
