"""Play-time serving: the :class:`~mccfr.serving.responder.Responder` seam that answers queries
(blueprint lookups, subgame solves within a deadline), the HTTP query service
(:mod:`mccfr.serving.service`), its Ray Serve wrapper (:mod:`mccfr.serving.ray_serve`), the ACPC client
(:mod:`mccfr.serving.acpc_client`) and a two-player ACPC dealer for tests (:mod:`mccfr.serving.acpc_dealer`)."""
