# A training loop of the kind that produced worker0.pt.trace.json.gz: torchvision's ResNet-50 on
# CIFAR-10 with the input pipeline in the training process (DataLoader(num_workers=0)), SGD, and
# the profiler's schedule around the loop. Written for this repository (MIT, as TorchTraceAP) to
# show where ttap places the trace's findings; the sample trace itself is the kineto TensorBoard
# plugin's (BSD-3-Clause, LICENSE). The trace was recorded without Python stacks, so ttap places
# the findings whose fix has one shape here (the DataLoader loop, zero_grad, the optimizer's
# step) on that statement and says so; record with with_stack=True for exact lines.
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.transforms as T

device = torch.device("cuda:0")
model = torchvision.models.resnet50(weights=None).to(device)
criterion = nn.CrossEntropyLoss().to(device)
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

transform = T.Compose([T.Resize(224), T.ToTensor(), T.Normalize((0.5,) * 3, (0.5,) * 3)])
dataset = torchvision.datasets.CIFAR10(root="./data", train=True, download=True,
                                       transform=transform)
train_loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True,
                                           num_workers=0)

model.train()
with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=torch.profiler.schedule(wait=2, warmup=3, active=6),
        on_trace_ready=torch.profiler.tensorboard_trace_handler("./log/resnet50_num_workers_0"),
) as prof:
    for step, (inputs, labels) in enumerate(train_loader):
        if step >= 11:
            break
        inputs, labels = inputs.to(device), labels.to(device)
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        prof.step()
