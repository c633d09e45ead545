# A model for the language server tests: attributes, add_module, an OrderedDict Sequential, and
# fc1 defined in two classes (the run's "encoder/fc1" is Encoder's). Lines that only mention a
# name (a comparison, a print) are not definitions.
from collections import OrderedDict

import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.fc1 = nn.Linear(16, 16)
        self.head = nn.Sequential(OrderedDict([
            ("proj", nn.Linear(16, 4)),
            ("out", nn.Softmax(dim=1)),
        ]))
        self.add_module("gate", nn.Sigmoid())
        self.tail = nn.Sequential(OrderedDict([("t1", nn.ReLU()), ("t2", nn.Tanh())]))

    def forward(self, x):
        if self.fc1 == None:
            print("proj", x)
        return self.gate(self.head(self.fc1(self.encoder(x))))
