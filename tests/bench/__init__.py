"""``make bench``: the whole program under the offline engine at fleet size, next to the SDK's own floor."""
