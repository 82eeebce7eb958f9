"""LanceDB storage: per-tenant chunk tables, publications, source blobs, locks."""

from tessera.store.deferred_init import REST_CLIENT, defer_package_init

defer_package_init(REST_CLIENT)  # before anything imports lancedb (see deferred_init)
