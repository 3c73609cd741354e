"""actorgrad: PyTorch's autograd engine on actors (C++ Actor Framework).

``import actorgrad.torch`` and call ``actorgrad.torch.install()`` to run every
backward pass of the process on the actor engine; see ``actorgrad.torch``.
"""
