/* `gstat pca --distributed` (built when MPI is found; see pca_mpi.c). */
#ifndef GSTAT_CLI_PCA_MPI_H
#define GSTAT_CLI_PCA_MPI_H

/* argv as pca_main's, --distributed anywhere in it. Initializes and
 * finalizes MPI; returns the exit status (the same on every rank). */
int pca_mpi_main(int argc, char **argv);

#endif /* GSTAT_CLI_PCA_MPI_H */
