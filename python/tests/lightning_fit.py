"""Fits a tiny model with PyTorch Lightning on 2 CPU processes over the collcomm backend.

Lightning starts rank 1 by running this script again (DDP's "popen" launcher); rank 0 prints the
final parameters' checksum and the loss, which test_lightning.py checks.
"""
import sys

import torch
import torch.nn.functional as F
from pytorch_lightning import LightningModule, Trainer
from pytorch_lightning.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset


class Tiny(LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))

    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(backend):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 8, generator=g)
    y = (x[:, :4].argmax(1))
    model = Tiny()
    trainer = Trainer(strategy=DDPStrategy(process_group_backend=backend), accelerator="cpu", devices=2,
                      max_epochs=3, enable_progress_bar=False, enable_model_summary=False, logger=False,
                      enable_checkpointing=False)
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=32))
    import torch.distributed as dist

    name = dist.get_backend()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    if trainer.global_rank == 0:
        print(f"RESULT backend={name} loss={trainer.callback_metrics['loss'].item():.6f} "
              f"checksum={flat.double().sum().item():.9f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
