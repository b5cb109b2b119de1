"""Reading saved checkpoints again: elicitation after training (elicit), and your own model's
checkpoints walked and sampled (walk, run_sampler, diffusers_sampler)."""
