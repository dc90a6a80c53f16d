"""The ``local`` backend: KRaft JVMs on this machine, every link through our own Toxiproxy
(``cluster.Cluster``; its nodes in ``node``, link control in ``proxy_links``, the brokers' class-data
sharing archive in ``broker_class_archive``). The compose backend builds on it."""
