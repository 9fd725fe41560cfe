//! Which rank of a distributed job this process is, from the variables its launcher sets (torchrun,
//! Slurm, Open MPI, MPICH/Intel MPI's PMI). Only the numbers are kept, never the environment.
use memshim_trace::RankInfo;

/// The rank the launcher variables read through `get` describe, if any.
pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Option<RankInfo> {
    let num = |name: &str| get(name).and_then(|v| v.trim().parse::<u32>().ok());
    // (rank, local rank, world size, launcher), most specific first: torchrun sets RANK too, and a
    // job step under Slurm may run an MPI launcher whose numbers are the ones that count.
    let schemes: [(&str, &str, &str, &str); 4] = [
        ("RANK", "LOCAL_RANK", "WORLD_SIZE", "env"),
        (
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "openmpi",
        ),
        ("PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "pmi"),
        ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "slurm"),
    ];
    schemes.iter().find_map(|&(rank, local, size, launcher)| {
        let launcher = if launcher == "env" && get("TORCHELASTIC_RUN_ID").is_some() {
            "torchrun"
        } else {
            launcher
        };
        Some(RankInfo {
            rank: num(rank)?,
            local_rank: num(local),
            world_size: num(size),
            launcher: launcher.into(),
        })
    })
}

/// The host part of a trace file name: the host name up to its first dot, file-name-safe.
pub fn host_for_file_name(host: &str) -> String {
    host.split('.')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn rank(pairs: &[(&str, &str)]) -> Option<RankInfo> {
        let m: HashMap<&str, &str> = pairs.iter().copied().collect();
        from_lookup(|k| m.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn launchers_are_told_apart() {
        let torchrun = rank(&[
            ("RANK", "3"),
            ("LOCAL_RANK", "1"),
            ("WORLD_SIZE", "4"),
            ("TORCHELASTIC_RUN_ID", "none"),
            ("SLURM_PROCID", "0"),
        ])
        .unwrap();
        assert_eq!(
            (torchrun.rank, torchrun.local_rank, torchrun.world_size),
            (3, Some(1), Some(4))
        );
        assert_eq!(torchrun.launcher, "torchrun");
        assert_eq!(rank(&[("RANK", "0")]).unwrap().launcher, "env");
        let mpi = rank(&[("OMPI_COMM_WORLD_RANK", "5"), ("OMPI_COMM_WORLD_SIZE", "8")]).unwrap();
        assert_eq!(
            (mpi.rank, mpi.local_rank, mpi.world_size),
            (5, None, Some(8))
        );
        assert_eq!(mpi.launcher, "openmpi");
        let slurm = rank(&[("SLURM_PROCID", "2"), ("SLURM_LOCALID", "0")]).unwrap();
        assert_eq!((slurm.rank, slurm.launcher.as_str()), (2, "slurm"));
    }

    #[test]
    fn no_rank_or_garbage_is_none() {
        assert_eq!(rank(&[]), None);
        assert_eq!(rank(&[("RANK", "zero")]), None);
        assert_eq!(rank(&[("LOCAL_RANK", "0")]), None);
    }

    #[test]
    fn host_names_become_safe_short_names() {
        assert_eq!(
            host_for_file_name("gpu-node12.cluster.example"),
            "gpu-node12"
        );
        assert_eq!(host_for_file_name("a/b c"), "a_b_c");
    }
}
