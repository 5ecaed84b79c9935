"""The REST facade as kube-apiserver's request pipeline, one part per module.

::

    wire (ownergc._kit.http.ServerConnection, h11)
      -> responses.ConnectionServer      request info, then the chain; writes the reply
         -> filters.RequestLog           counts and records every request
         -> filters.StatusErrors         errors become metav1.Status responses
         -> filters.Authentication       who sent it (anonymous today)
         -> router.Router                by request info:
              router.NonResourceRoutes     /, health, /version, openapi.OpenAPIService
              discovery.Discovery          /api, /apis, group, resource lists
              router.ResourceResolver      the resource in the registry (404s)
              faults.RequestGate           a store wrapper's scripted faults
              router.RESTDispatcher        the verb's handler:
                rest.*Handler, watch.WatchHandler, scale.ScaleHandler,
                connect.ConnectHandler (pods/log, exec, ..., the proxies)
                  writes: dryrun.DryRunPolicy, admission.AdmissionChain,
                          fieldmanager.FieldManager, rest.WriteHooks
      <- watch.WatchStreamer             a watch reply, streamed on the connection

Each part receives what it uses in its constructor; ``KubeAPIServer``
(``..http``) builds them and owns the listener. ``docs/architecture.md`` draws it.
"""
