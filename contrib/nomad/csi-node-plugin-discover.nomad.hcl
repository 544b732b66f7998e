# A CSI node plugin run by Nomad and published by plugfs without hooks.
#
# The job is the plugin task and its csi_plugin block, nothing else.  For
# such a task Nomad makes a socket directory per allocation on the host,
# <data_dir>/client/csi/plugins/<alloc id>/, and bind-mounts it at mount_dir
# (/csi) in the task, where the plugin creates csi.sock.  plugfs watches that
# directory (inotify) with the one section a Nomad client needs in
# /etc/plugfs/plugfs.ini:
#
#   [discover.nomad]
#   root = /var/lib/nomad/client/csi/plugins
#
# When the socket appears plugfs asks the plugin who it is over gRPC
# (csi.v1.Identity/GetPluginInfo: its name; GetPluginCapabilities and
# NodeGetInfo: controller, node or both), registers the allocation under
# that name with the directory's name as its id, and serves it at
#
#   /run/plugfs/plugins/csi-node/hostpath.csi.k8s.io/csi.sock
#
# (the driver's own name, as this plugin reports it).  A rolling update's
# new allocation is newest and becomes active; when it goes (its socket or
# directory removed: a clean stop, Nomad's garbage collection) plugfs falls
# back to the one before; a socket that stays but is dead follows plugfs's
# liveness rules and is forgotten after [discover.NAME] forget_after.
#
# Hooks (csi-node-plugin.nomad.hcl) are still worth it when the stable path
# must carry a name other than the one the plugin reports, when the socket
# is outside Nomad's layout, or when a deployment should wait in a
# poststart task until plugfs serves the new allocation.
#
# Needs on every client:
#   - plugfs running (the plugfs package's unit) with the [discover.nomad]
#     section above, its root the client's <data_dir>/client/csi/plugins;
#   - the docker driver allowing privileged containers (a node plugin mounts
#     volumes on the host):
#       plugin "docker" { config { allow_privileged = true } }

job "csi-hostpath-node" {
  type = "system" # a node plugin runs on every client

  update {
    max_parallel = 1
    stagger      = "30s"
  }

  group "node" {
    restart {
      attempts = 3
      interval = "5m"
      delay    = "10s"
      mode     = "delay"
    }

    task "plugin" {
      driver = "docker"

      config {
        image      = "registry.k8s.io/sig-storage/hostpathplugin:v1.11.0"
        privileged = true
        args = [
          "--drivername=hostpath.csi.k8s.io",
          "--endpoint=unix:///csi/csi.sock",
          "--nodeid=${node.unique.name}",
        ]
      }

      csi_plugin {
        id        = "hostpath"
        type      = "node"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 100
        memory = 128
      }
    }
  }
}
