# A CSI node plugin run by Nomad and published through plugfs.
#
# The plugin task has a csi_plugin block, so Nomad itself registers and uses
# it as a CSI plugin.  For such a task Nomad makes a socket directory per
# allocation on the host, <data_dir>/client/csi/plugins/<alloc id>/, and
# bind-mounts it at mount_dir (/csi) in the task; the plugin listens on
# /csi/csi.sock.  Two allocations on one host therefore never share a socket
# path, and nothing but sockets is in those directories: consumers can be
# given them read-only without seeing any allocation's files or secrets.
#
# A poststart task registers the allocation's socket with plugfs and waits
# until plugfs serves it: `plugfs register' probes the socket, and
# `plugfs wait --alloc' returns once csi.sock leads to this allocation (its
# socket accepts connections, and no newer allocation is alive).  A poststop
# task deregisters it.  Consumers on the host use the stable path
#
#   /run/plugfs/plugins/csi-node/hostpath/csi.sock
#
# which leads to the most recent allocation whose socket is alive.
#
# A system job runs one allocation per client.  On one client, allocations
# of it overlap when a client restart restores the old one next to a
# replacement, when an allocation is replaced while its predecessor is
# still stopping, or when the task restarts on the same socket (a short
# outage, ridden out by plugfs's probes); an update itself stops the old
# allocation before it places the new one.  plugfs keeps consumers on one
# path through all of it.
#
# Needs on every client:
#   - plugfs running (the plugfs package's unit), with
#       [registry] socket_roots = <data_dir>/client/csi/plugins
#     so that only such sockets can be registered;
#   - the docker driver allowing privileged containers (a node plugin mounts
#     volumes on the host):
#       plugin "docker" { config { allow_privileged = true } }
#   - the raw_exec driver for the two hook tasks, which run the plugfs CLI
#     on the host:
#       plugin "raw_exec" { config { enabled = true } }
#   - the client's data_dir given to this job when it is not the default:
#       nomad job run -var nomad_data_dir=/opt/nomad csi-node-plugin.nomad.hcl

variable "nomad_data_dir" {
  type        = string
  default     = "/var/lib/nomad"
  description = "The Nomad client's data_dir: plugin sockets are under <data_dir>/client/csi/plugins."
}

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

    # Registers this allocation's socket and waits (120 s) until plugfs
    # serves it.  A failure (plugfs not running: exit 3; the socket never
    # came alive: exit 1) fails the hook, and the restart block above applies.
    task "plugfs-register" {
      lifecycle {
        hook    = "poststart"
        sidecar = false
      }

      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args = [
          "-c",
          "/usr/bin/plugfs register --type csi-node --name hostpath --alloc \"$NOMAD_ALLOC_ID\" --socket \"$PLUGFS_SOCKET\" --kind node --version 1.11.0 && exec /usr/bin/plugfs wait csi-node hostpath --alloc \"$NOMAD_ALLOC_ID\" --timeout 120",
        ]
      }

      # The host path of the socket the plugin creates in its mount_dir.
      env {
        PLUGFS_SOCKET = "${var.nomad_data_dir}/client/csi/plugins/${NOMAD_ALLOC_ID}/csi.sock"
      }

      resources {
        cpu    = 20
        memory = 32
      }
    }

    # Deregisters this allocation when its tasks have stopped.  The stable
    # path then leads to the next most recent allocation, if any.
    # Deregistering an allocation that is not registered succeeds.
    task "plugfs-deregister" {
      lifecycle {
        hook = "poststop"
      }

      driver = "raw_exec"

      config {
        command = "/usr/bin/plugfs"
        args = [
          "deregister", "--type", "csi-node", "--name", "hostpath",
          "--alloc", "${NOMAD_ALLOC_ID}",
        ]
      }

      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
