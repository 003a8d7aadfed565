"""Keras 3 on the torch backend (KERAS_BACKEND=torch): its steps are no torch.optim step."""

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.random.rand(64, 4).astype("float32")
y = x.sum(1, keepdims=True)
history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
print(f"loss {history.history['loss'][-1]:.10f}")
