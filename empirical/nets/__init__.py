"""The networks and their files: the conditional UNet (unet), the variational diffusion model (vdm),
the weights' average (ema), the probe's network (probe_net), tensor files read safely (tensorfile),
and where and in what precision they compute (device)."""
