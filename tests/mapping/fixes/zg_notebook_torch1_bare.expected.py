# ttap-fix recipe=zero-grad-set-to-none at="optimizer.zero_grad()" facts=torch_before_2:1
#!/usr/bin/env python
# coding: utf-8

# In[1]:


import torch
import torchvision


# In[2]:


model = torchvision.models.resnet18().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


# In[3]:


for images, labels in loader:
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
    loss.backward()
    optimizer.step()
