# ttap-fix recipe=channels-last at="out = model(images.cuda())"
import torch
from torchvision.models import resnet50

model = resnet50().cuda()
model = model.to(memory_format=torch.channels_last)
criterion = torch.nn.CrossEntropyLoss()
for images, labels in loader:
    out = model(images.cuda(memory_format=torch.channels_last))
    loss = criterion(out, labels.cuda())
