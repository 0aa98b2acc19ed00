# ttap-fix recipe=channels-last at="out = model(images.cuda())"
import torch
from torchvision.models import resnet50

model = resnet50().cuda()
criterion = torch.nn.CrossEntropyLoss()
for images, labels in loader:
    out = model(images.cuda())
    loss = criterion(out, labels.cuda())
