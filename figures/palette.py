"""One color per way of prompting a model, the same in every figure: naive prompting, the capability
(the best protocol at each step), and each elicitation protocol."""

PROTOCOL_COLORS = {
    "naive": "k",
    "capability": "tab:red",
    "overprompt": "tab:orange",
    "intervention": "tab:green",
    "patch": "tab:purple",
    "cfg": "tab:blue",
}
