# ttap-fix recipe=channels-last at="logits = self.model(batch["
import timm
import torch


class Classifier:
    def __init__(self, name: str) -> None:
        self.model = timm.create_model(name, pretrained=True).cuda()
        self.loss = torch.nn.CrossEntropyLoss()

    @torch.inference_mode()
    def predict(self, batch):
        logits = self.model(batch["image"])
        return logits.argmax(-1)
