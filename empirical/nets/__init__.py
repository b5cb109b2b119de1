"""The networks and their files: the conditional UNet (unet), the variational diffusion model (vdm), the weights'
average (ema), the probe's network (probe_net), and tensor files read safely (tensorfile)."""
