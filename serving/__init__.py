"""Play-time serving: the :class:`~serving.responder.Responder` seam that answers queries
(blueprint lookups, subgame solves within a deadline), the HTTP query service
(:mod:`serving.service`), its Ray Serve wrapper (:mod:`serving.ray_serve`), the ACPC client
(:mod:`serving.acpc_client`) and a two-player ACPC dealer for tests (:mod:`serving.acpc_dealer`)."""
