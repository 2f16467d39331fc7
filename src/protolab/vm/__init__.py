"""Virtual machines as load hosts: QEMU guests, their virtual disk controllers and the hypervisor's CPU."""
