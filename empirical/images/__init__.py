"""The synthetic images: the concepts' data-generating process (data, data_config), their drawing
(render) and sample grids (grid). numpy and matplotlib only: no torch."""
