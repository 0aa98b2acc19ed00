# ttap-fix recipe=defer-host-sync at="epoch_loss += loss.item() * x.size(0)"
#!/usr/bin/env python
# coding: utf-8

# In[2]:


import torch


# In[7]:


epoch_loss = 0.0
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    epoch_loss += loss.detach() * x.size(0)


# In[8]:


print("epoch loss", float(epoch_loss) / len(loader.dataset))
