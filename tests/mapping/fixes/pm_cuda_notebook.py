# ttap-fix recipe=pin-memory-non-blocking at="images = images.cuda()"
#!/usr/bin/env python
# coding: utf-8

# In[1]:


import torch
from torch.utils.data import DataLoader


# In[4]:


train_loader = DataLoader(
    train_set,
    batch_size=64,
    pin_memory=False,
)


# In[5]:


for epoch in range(3):
    for images, labels in train_loader:
        images = images.cuda()
        labels = labels.cuda()
        loss = criterion(net(images), labels)
